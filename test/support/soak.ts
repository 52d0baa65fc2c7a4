/**
 * How long the slow trials run. `npm test` runs a short version of each, long enough to
 * fail on the defect it guards; `npm run test:soak` sets TURNFOLD_SOAK=1 and runs them at
 * soak length (more kills, more rounds, larger logs).
 */
export const soak = process.env["TURNFOLD_SOAK"] === "1";

/** `short` in the test command, `long` in the soak run. */
export const atLength = <T>(short: T, long: T): T => (soak ? long : short);
