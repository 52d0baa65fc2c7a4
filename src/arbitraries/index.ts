/** `turnfold/arbitraries`: fast-check generators of valid histories, to fuzz your own runtime. */
export { histories, steps, interpret, defaultMix, type HistoryMix, type HistoryOptions, type Step, type Plan } from "./histories.js";
export { suiteSettings } from "./settings.js";
