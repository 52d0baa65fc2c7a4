export * from "./schema.js";
export * from "./validate.js";
export * from "./jsonl.js";
export * from "./log.js";
export * from "./errors.js";
export * from "./store.js";
export { MemoryLog, type MemoryLogOptions } from "./memory-log.js";
export { openSqliteLog, SqliteLog, type SqliteLogOptions } from "./sqlite-log.js";
