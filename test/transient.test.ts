/** Which store failures the live path waits out (they pass) and which it reports at once. */
import { describe, expect, it } from "vitest";
import { isTransientStoreError } from "../src/events/transient.js";

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe("isTransientStoreError", () => {
  it.each([
    withCode("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
    withCode("terminating connection due to administrator command", "57P01"),
    withCode("the database system is starting up", "57P03"),
    withCode("database is locked", "SQLITE_BUSY"),
    new Error("Connection terminated unexpectedly"),
    new Error("Client was closed and is not queryable"),
    new Error("Client has encountered a connection error and is not queryable"),
    Object.assign(new AggregateError([withCode("connect ECONNREFUSED ::1:5432", "ECONNREFUSED")], ""), {}),
    new Error("query failed", { cause: withCode("read ECONNRESET", "ECONNRESET") }),
  ])("waits out %s", (error) => {
    expect(isTransientStoreError(error)).toBe(true);
  });

  it.each([
    new Error("nothing appended, an event is not valid: event 0: at: required field is missing"),
    withCode("relation \"events\" does not exist", "42P01"),
    withCode("not a SQLite database", "SQLITE_NOTADB"),
    "a string",
    undefined,
  ])("does not wait out %s", (error) => {
    expect(isTransientStoreError(error)).toBe(false);
  });
});
