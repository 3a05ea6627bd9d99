// export_part – one part of a split export (lib/exports/parts.ts does the work)
import { exportPartTask } from "@/lib/exports/parts";
import { dispatchToRunner } from "./dispatch";

export default dispatchToRunner(exportPartTask.type);
