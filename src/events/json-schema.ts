/**
 * The events as JSON Schema (draft 2020-12), generated from the zod schemas, for
 * producers written in other languages. `docs/events.schema.json` is this output;
 * `npm run schema` writes it and a test fails when it is out of date.
 */
import { z } from "zod";
import { TurnfoldEvent, schemaVersion } from "./schema.js";

/**
 * The JSON Schema of one event of schema version 1: a `oneOf` over the event types.
 *
 * @example
 * writeFileSync("events.schema.json", JSON.stringify(eventsJsonSchema(), null, 2));
 */
export function eventsJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(TurnfoldEvent, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
  return {
    $schema: generated.$schema,
    $id: `urn:turnfold:events:v${schemaVersion}`,
    title: `turnfold event, schema version ${schemaVersion}`,
    description:
      "One event of a turnfold log, as a producer writes it (the log assigns `seq`). Fields a type does not name are kept.",
    ...Object.fromEntries(Object.entries(generated).filter(([k]) => k !== "$schema")),
  };
}
