/** How `turnfold mcp` pushes turns to its host (see `server.ts`). */
export const pushModes = ["channel", "resource", "none"] as const;
export type PushMode = (typeof pushModes)[number];
