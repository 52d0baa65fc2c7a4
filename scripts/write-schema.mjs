// Writes docs/events.schema.json from the zod schemas (run through `npm run schema`, which builds first).
import { writeFileSync } from "node:fs";
import { eventsJsonSchema } from "../dist/src/events/json-schema.js";

const target = new URL("../docs/events.schema.json", import.meta.url);
writeFileSync(target, JSON.stringify(eventsJsonSchema(), null, 2) + "\n");
console.error(`wrote ${target.pathname}`);
