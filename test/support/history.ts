export { History, ids } from "../../src/testing/history.js";
