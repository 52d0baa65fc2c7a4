export { History, ids } from "../../src/testing/history-builder.js";
