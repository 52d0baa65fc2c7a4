export * from "./state.js";
export * from "./decisions.js";
export { step } from "./reduce.js";
export { lineageTip, isLive } from "./ownership.js";
export { isCliConsumer } from "./drain.js";
