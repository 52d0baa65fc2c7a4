/**
 * `GET /v1/sessions` and `GET /v1/sessions/KEY/items` (issue 48): the listings a client uses
 * to find what to explain, filtered as every read is, and paged without losing a row.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { call, producerToken } from "./support/serve.js";
import { openSession, running, stop } from "./support/running.js";
import { tempDir } from "./support/tmp.js";

const dir = tempDir("turnfold-listings-");

describe("listings over HTTP", () => {
  it("a session token lists its own conversation (its key and its successor), the producers' token every session; a wrong token is told it is unknown", async () => {
    const r = await running(join(dir, "sessions.sqlite"));
    try {
      const mine = await openSession(r, "mine");
      await openSession(r, "theirs");
      const compressed = await call(r.url, "POST", "/v1/sessions/mine/compress", mine, { successor: "mine:2" });
      expect(compressed.status, compressed.text).toBe(201);
      const own = await call(r.url, "GET", "/v1/sessions", mine);
      expect(own.status, own.text).toBe(200);
      expect((own.body["sessions"] as { session: string }[]).map((s) => s.session).sort()).toEqual(["mine", "mine:2"]);
      const all = await call(r.url, "GET", "/v1/sessions", producerToken);
      expect((all.body["sessions"] as { session: string; state: string }[]).map((s) => [s.session, s.state])).toEqual([
        ["mine", "retired"],
        ["mine:2", "open"],
        ["theirs", "open"],
      ]);
      const stranger = await call(r.url, "GET", "/v1/sessions", "u".repeat(43));
      expect(stranger.status).toBe(401);
      expect(stranger.body.error).toMatch(/this token is unknown here/);
      expect((await call(r.url, "GET", "/v1/sessions")).status).toBe(401);
    } finally {
      await stop(r);
    }
  });

  it("a session's items, only its own, in seq order, a page at a time: after=next goes on where a page stopped, never splitting a turn's members", async () => {
    const r = await running(join(dir, "items.sqlite"));
    try {
      const token = await openSession(r, "s", { surface: "tui" });
      await openSession(r, "other", { surface: "tui" });
      const exits = (owner: string, ids: string[]) => ids.map((process) => ({ type: "process.exited", at: Date.now(), process, exitCode: 0, reason: "exited", output: "", owner }));
      // Three turns of three members each, and one item of another session.
      for (const batch of [["a1", "a2", "a3"], ["b1", "b2", "b3"], ["c1", "c2", "c3"]]) {
        expect((await call(r.url, "POST", "/v1/events", producerToken, exits("s", batch))).status).toBe(200);
        expect((await call(r.url, "POST", "/v1/sessions/s/drain", token, { consumer: "tui-poller" })).status).toBe(200);
      }
      expect((await call(r.url, "POST", "/v1/events", producerToken, exits("other", ["x1"]))).status).toBe(200);
      const pages: string[][] = [];
      let after = 0;
      for (let guard = 0; guard < 10; guard++) {
        const page = await call(r.url, "GET", `/v1/sessions/s/items?limit=2&after=${after}`, token);
        expect(page.status, page.text).toBe(200);
        const items = page.body["items"] as { member: string; fate: string; seq: number }[];
        pages.push(items.map((i) => i.member));
        expect(items.every((i) => i.fate === "delivered")).toBe(true);
        if (page.body["next"] === undefined) break;
        after = page.body["next"] as number;
      }
      // A page of 2 grows to the turn's 3 members; every row once, none of the other session's.
      expect(pages).toEqual([
        ["a1", "a2", "a3"],
        ["b1", "b2", "b3"],
        ["c1", "c2", "c3"],
      ]);
      const bad = await call(r.url, "GET", "/v1/sessions/s/items?limit=0", token);
      expect(bad.status).toBe(400);
      expect(bad.body["problems"]).toEqual([expect.objectContaining({ field: "limit" })]);
      expect((await call(r.url, "GET", "/v1/sessions/other/items", token)).status).toBe(404);
    } finally {
      await stop(r);
    }
  });
});
