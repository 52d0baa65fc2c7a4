/** `turnfold/arbitraries`: fast-check generators of valid histories, to fuzz your own runtime. */
export { histories, steps, interpret, defaultMix, mixes, type HistoryMix, type HistoryOptions, type Step, type Plan } from "./histories.js";
export { suiteSettings } from "./settings.js";
/** The builder turnfold's own tests write histories with: sessions, processes, drains, in order, with seqs. */
export { History, ids } from "../testing/history-builder.js";
