/** `npm run bench`: every figure with its same-run baseline and the ratio between them. */
import { appendBench } from "./append.js";
import { printTable, type Row } from "./harness.js";

const rows: Row[] = [];
process.stderr.write("measuring append …\n");
rows.push(...(await appendBench()));
printTable(rows);
