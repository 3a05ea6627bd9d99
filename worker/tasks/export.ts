// export – one export job (lib/exports/task.ts does the work)
import { exportTask } from "@/lib/exports/task";
import { dispatchToRunner } from "./dispatch";

export default dispatchToRunner(exportTask.type);
