/** A child node process for the multi-process tests: its first line of output means "ready". */
import { spawn } from "node:child_process";

export function child(args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  const proc = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const ready = new Promise<void>((resolve) => proc.stdout.once("data", () => resolve()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on("exit", (code) => resolve({ code, stdout, stderr })),
  );
  return { proc, ready, exited };
}
