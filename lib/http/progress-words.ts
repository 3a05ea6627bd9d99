/** The app words jobs' progress with the one formatter (imported for its effect by principal.ts). */
import { progressMessage } from "../client/progress";
import { setProgressWords } from "../jobs/progress-words";

setProgressWords(progressMessage);
