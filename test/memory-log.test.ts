import { MemoryLog } from "../src/events/index.js";
import { describeLogContract } from "./support/log-contract.js";

describeLogContract("memory", async () => new MemoryLog());
