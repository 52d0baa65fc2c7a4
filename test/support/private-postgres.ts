/**
 * A PostgreSQL cluster of a test's own, for tests that stop and start the server: the
 * shared one on 127.0.0.1:5432 is never restarted, since other test files use it.
 * `initdb` and `pg_ctl` refuse to run as root, so they run as the `postgres` user, in a
 * temporary folder it owns, on a free port.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = "/usr/lib/postgresql/15/bin";

/** Why a private cluster cannot be had here, or undefined when it can. */
export function privateClusterUnavailable(): string | undefined {
  if (!existsSync(join(bin, "initdb"))) return `${bin}/initdb is missing`;
  if (process.getuid?.() !== 0) return "starting a cluster as the postgres user needs root (runuser)";
  try {
    execFileSync("id", ["postgres"], { stdio: "ignore" });
  } catch {
    return "there is no postgres user";
  }
  return undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface PrivateCluster {
  readonly url: string;
  start(): void;
  stop(): void;
  remove(): void;
}

export async function privateCluster(): Promise<PrivateCluster> {
  const dir = mkdtempSync(join(tmpdir(), "turnfold-pg-"));
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  chownSync(dir, uid, gid);
  const port = await freePort();
  const data = join(dir, "data");
  const asPostgres = (command: string, args: string[]) => execFileSync("runuser", ["-u", "postgres", "--", join(bin, command), ...args], { stdio: "pipe", timeout: 60_000 });
  asPostgres("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  const cluster: PrivateCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => void asPostgres("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-w", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, "start"]),
    stop: () => void asPostgres("pg_ctl", ["-D", data, "-w", "-m", "fast", "stop"]),
    remove: () => {
      try {
        cluster.stop();
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  cluster.start();
  return cluster;
}
