/** `npm run bench`: every figure with its same-run baseline and the ratio between them. */
import { appendBench } from "./append.js";
import { foldBench } from "./fold.js";
import { printTable, type Row } from "./harness.js";
import { postgresBench } from "./postgres.js";
import { serviceBench } from "./service.js";
import { mcpBench } from "./mcp.js";
import { livePathBench } from "./live-path.js";
import { hookBench } from "./hook.js";
import { transcriptsBench } from "./transcripts.js";

const rows: Row[] = [];
process.stderr.write("measuring append …\n");
rows.push(...(await appendBench()));
process.stderr.write("measuring the projection (1,000,000 events; about a minute) …\n");
rows.push(...(await foldBench()));
process.stderr.write("measuring PostgreSQL (append, ledger claims, live-runner latency) …\n");
rows.push(...(await postgresBench()));
process.stderr.write("measuring turnfold serve (HTTP appends, stream latency, memory per stream) …\n");
rows.push(...(await serviceBench()));
process.stderr.write("measuring the live path end to end, 1,000 sessions, SQLite and PostgreSQL (about a minute) …\n");
rows.push(...(await livePathBench()));
process.stderr.write("measuring turnfold mcp (exit → channel notification) …\n");
rows.push(...(await mcpBench()));
process.stderr.write("measuring the Stop hook's answer, with its server and without (logs of 10^3 and 10^5 events) …\n");
rows.push(...(await hookBench()));
process.stderr.write("measuring the reading of Claude Code's transcripts (audit and import of 220 and 2,200 sessions) …\n");
rows.push(...(await transcriptsBench()));
printTable(rows);
