/** `GET /healthz` and `GET /metrics`: what a process manager, a load balancer and Prometheus ask. */
import { routeConfig, type ServiceContext } from "../context.js";

/** Registers the health and metrics routes. */
export function healthRoutes(context: ServiceContext): void {
  const { app, log, runner, metrics } = context;
  // 200 only when the log answers and the live runner is not waiting for it: a process
  // manager or a load balancer must never see a healthy service that cannot decide turns.
  app.get("/healthz", routeConfig("public"), async (_request, reply) => {
    let lastSeq: number;
    try {
      lastSeq = await log.lastSeq();
    } catch (error) {
      return reply.code(503).send({ ok: false, error: `the log is unreachable: ${(error as Error).message}` });
    }
    const reason = context.unhealthy();
    if (reason !== undefined) return reply.code(503).send({ ok: false, error: reason, lastSeq, followed: runner.folded });
    return { ok: true, lastSeq, followed: runner.folded };
  });
  app.get("/metrics", routeConfig("public"), async (_request, reply) => reply.type(metrics.contentType).send(await metrics.text()));
}
