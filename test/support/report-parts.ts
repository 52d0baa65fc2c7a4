/** The data parts of a report page, as the page's program reads them (gzipped JSON in base64). */
import { gunzipSync } from "node:zlib";
import type { ReportPart } from "../../src/report/parts.js";

export function reportPartsOf(html: string): ReportPart[] {
  return [...html.matchAll(/<script type="application\/gzip\+base64" class="report-part">([^<]*)<\/script>/g)].map((m) => JSON.parse(gunzipSync(Buffer.from(m[1]!, "base64")).toString("utf8")) as ReportPart);
}
