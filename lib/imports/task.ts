/**
 * An import as a pipeline (lib/jobs/pipeline.ts): scan → parse → chunk → load
 * → commit, each stage a job of its own with its own retries. Its result: the
 * rows read, inserted, updated and rejected, and the errors file.
 */
import { definePipeline } from "../jobs/pipeline";
import {
  importChunkTask,
  importCommitTask,
  importLoadTask,
  importParseTask,
  importRequestSchema,
  importScanTask,
  type CommitOutput,
  type ImportRequest,
  type ParseOutput,
  type ScanOutput,
} from "./stages";

export type ImportResult = {
  importId: string;
  dataset: ImportRequest["dataset"];
  mode: ImportRequest["mode"];
  sha256: string;
  size: number;
  rowsRead: number;
  inserted: number;
  updated: number;
  rejected: number;
  /** Rows an upsert left out because a later line of the file had the same key. */
  duplicates: number;
};

const stageInput = ({
  input,
  outputs,
  pipelineId,
  job,
}: {
  input: ImportRequest;
  outputs: Record<string, unknown>;
  pipelineId: string;
  job: { id: string };
}) => ({
  importId: pipelineId,
  jobId: job.id,
  request: input,
  outputs,
});

export const importTask = definePipeline<ImportRequest, ImportResult>({
  type: "import",
  queue: "interactive",
  inputSchema: importRequestSchema,
  // Its one file, errors.csv, downloads from the import's own route.
  fileUrl: (jobId) => `/api/v1/imports/${jobId}/errors`,
  stages: [
    { name: "scan", task: importScanTask, input: (a) => ({ ...stageInput(a), outputs: {} }) },
    { name: "parse", task: importParseTask, input: (a) => ({ ...stageInput(a), outputs: { scan: a.outputs.scan } }) },
    { name: "chunk", task: importChunkTask, input: (a) => ({ ...stageInput(a), outputs: { parse: a.outputs.parse } }) },
    // The staging table is dropped when the import ends: a replay after it loads again.
    {
      name: "load",
      task: importLoadTask,
      durable: false,
      input: (a) => ({ ...stageInput(a), outputs: { chunk: a.outputs.chunk } }),
    },
    {
      name: "commit",
      task: importCommitTask,
      input: (a) => ({
        ...stageInput(a),
        outputs: { scan: a.outputs.scan, parse: a.outputs.parse, load: a.outputs.load },
      }),
    },
  ],
  result({ input, outputs, pipelineId }) {
    const scan = outputs.scan as ScanOutput;
    const parse = outputs.parse as ParseOutput;
    const commit = outputs.commit as CommitOutput;
    return {
      importId: pipelineId,
      dataset: input.dataset,
      mode: input.mode,
      sha256: scan.sha256,
      size: scan.size,
      rowsRead: parse.rowsRead,
      inserted: commit.inserted,
      updated: commit.updated,
      rejected: parse.rejected,
      duplicates: commit.duplicates,
    };
  },
});
