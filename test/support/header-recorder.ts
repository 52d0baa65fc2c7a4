/** A loopback HTTP server that records each request's headers and answers every one with one status. */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export async function headerRecorder(status: number) {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    seen.push(request.headers);
    request.resume().on("end", () => response.writeHead(status).end("{}"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { port, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
