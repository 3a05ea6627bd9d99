/**
 * Every job kind, one line each: a workload's client registration (./index.ts lists them for
 * the browser and the CLI). A new workload's kind is its own file here and one line below.
 */
export { exportKind } from "./export";
export { importKind } from "./import";
export { scheduleKind } from "./schedule";
export { webhookKind } from "./webhook";
export { reportKind } from "./report";
export { notificationKind } from "./notification";
