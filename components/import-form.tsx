"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { refetchAfterChange } from "@/lib/client/refresh";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useId, useRef, useState, type DragEvent, type FormEvent } from "react";
import { ApiError, jobKeys } from "@/lib/client/api";
import { formatBytes } from "@/lib/client/format";
import {
  createImport,
  datasetColumns,
  datasetOfName,
  fileProblem,
  formatOfName,
  importKeys,
  type ImportBody,
} from "@/lib/client/imports";
import { useTusUpload } from "@/lib/client/uploads";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { useConfirm } from "./ui/confirm-dialog";
import { fieldClass as field, Select } from "./ui/select";
import { FieldError, UploadPanel } from "./import-upload-panel";
import { TableBox, td, th, theadClass } from "./ui/table";

const MODES = [
  ["insert", "Insert", "Every good row becomes a new row (ids in the file are ignored)."],
  [
    "upsert",
    "Upsert",
    "Rows that match an existing one are updated (customers by email, orders and events by id); the rest are added.",
  ],
] as const;

/** The fields the API may name in a 400, and what the form calls them. */
type Field = "uploadId" | "dataset" | "format" | "mode" | "maxBadRows";

/**
 * Pick or drop a file, say where it goes and how, then send it (tus, resumable:
 * pause, resume, cancel; a dropped connection retries) and start the import.
 * Once the import is queued the page shows its timeline (`?id=`). Opened by "New import"
 * (`?new=1`): its heading takes the focus; `closeHref` closes it. A refused submit keeps every
 * value (and the upload) for the next try.
 */
export function ImportForm({ closeHref }: { closeHref: string }) {
  const qc = useQueryClient();
  const router = useRouter();
  const id = useId();
  const { confirm, dialog } = useConfirm();
  const fileInput = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [dataset, setDataset] = useState("events");
  const [format, setFormat] = useState("csv");
  const [mode, setMode] = useState("insert");
  const [maxBadRows, setMaxBadRows] = useState("0");
  const [dragging, setDragging] = useState(false);
  const [cancelError, setCancelError] = useState<string | null>(null);
  /** The upload an import was started from: its bar stays full until another file is chosen. */
  const [imported, setImported] = useState<string | null>(null);
  const upload = useTusUpload();
  // Nothing works before hydration (the upload is the browser's): the button waits for it, and a file
  // picked meanwhile is taken up then.
  const [ready, setReady] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const problem = file ? fileProblem(file) : null;
  const busy = upload.state.phase === "uploading" || upload.state.phase === "paused";

  const mutation = useMutation({
    mutationFn: ({ body, key }: { body: ImportBody; key: string }) => createImport(body, key),
    onSuccess: (job) => {
      void refetchAfterChange(qc, importKeys.all);
      void refetchAfterChange(qc, jobKeys.lists());
      // Ready for the next file; the import's timeline takes over (and the focus).
      setImported(uploadedId);
      setFile(null);
      if (fileInput.current) fileInput.current.value = "";
      // The form stays open (its upload bar full) for the next file; Close closes it.
      router.push(`/imports?new=1&id=${job.id}`, { scroll: false });
    },
  });
  const error = mutation.error instanceof ApiError ? mutation.error : null;
  const fieldError = (path: Field) => error?.fields.find((f) => f.path === path)?.message;
  // A 400 names its fields: the first one named takes the focus.
  useEffect(() => {
    const first = error?.fields[0]?.path;
    if (!first) return;
    const el = document.getElementById(`${id}-${first}`);
    el?.focus();
  }, [error, id]);

  const choose = (f: File | null) => {
    setFile(f);
    setImported(null);
    mutation.reset();
    setCancelError(null);
    if (upload.state.phase === "done" || upload.state.phase === "failed") upload.reset();
    if (!f) return;
    const fmt = formatOfName(f.name);
    if (fmt) setFormat(fmt);
    const ds = datasetOfName(f.name);
    if (ds) setDataset(ds);
  };

  useEffect(() => {
    setReady(true);
    const early = fileInput.current?.files?.[0];
    if (early) choose(early);
    // Once, at hydration.
  }, []);

  const onDrop = (e: DragEvent<HTMLDivElement>) => {
    e.preventDefault();
    setDragging(false);
    if (busy) return;
    const files = e.dataTransfer.files;
    const f = files[0] ?? null;
    // The input shows the dropped file as if it had been picked.
    if (f && fileInput.current) fileInput.current.files = files;
    choose(f);
  };

  const startImport = (uploadId: string) => {
    const n = Number(maxBadRows);
    mutation.mutate({
      body: { uploadId, dataset, format, mode, maxBadRows: maxBadRows.trim() === "" ? 0 : n },
      // One key per submission: a double click starts one import.
      key: crypto.randomUUID(),
    });
  };

  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    if (pending) return startImport(pending);
    if (!file || problem) {
      fileInput.current?.focus();
      return;
    }
    mutation.reset();
    void upload.start(file);
  };

  // When the bytes are all there, the import starts by itself.
  const uploadedId = upload.state.phase === "done" ? upload.state.uploadId : null;
  /** An upload that is complete and whose import has not started (the API refused the fields): the next submit starts it. */
  const pending = uploadedId !== imported ? uploadedId : null;
  const startedFor = useRef<string | null>(null);
  useEffect(() => {
    if (!uploadedId || startedFor.current === uploadedId) return;
    startedFor.current = uploadedId;
    // The fields as they are now: the upload's end is the moment to read them.
    startImport(uploadedId);
  }, [uploadedId]);

  const fileErrorId = `${id}-file-error`;
  const fileError = problem ?? fieldError("uploadId");

  return (
    <form
      onSubmit={onSubmit}
      // The API checks the fields and its messages show under them; an upload it refuses is kept for the next try.
      noValidate
      aria-label="Import a file"
      className="rounded-lg border border-slate-200 bg-white p-4 shadow-sm sm:p-5"
    >
      {dialog}
      <div className="mb-4 flex flex-wrap items-center justify-between gap-3">
        <h2 ref={heading} tabIndex={-1} className="text-lg font-semibold focus:outline-none">
          Import a file
        </h2>
        {!busy && (
          <Link href={closeHref} scroll={false} className="text-sm text-indigo-700 underline">
            Close
          </Link>
        )}
      </div>
      <div
        data-testid="drop-zone"
        onDragOver={(e) => {
          e.preventDefault();
          if (!busy) setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
        className={`rounded-lg border-2 border-dashed p-4 ${
          dragging ? "border-indigo-500 bg-indigo-50" : "border-slate-300 bg-slate-50"
        }`}
      >
        <label htmlFor={`${id}-uploadId`} className="block text-sm font-medium">
          File: CSV or JSON Lines, up to 2 GB
        </label>
        <input
          ref={fileInput}
          id={`${id}-uploadId`}
          type="file"
          name="file"
          accept=".csv,.jsonl,.ndjson,text/csv,application/x-ndjson"
          disabled={busy}
          onChange={(e) => choose(e.target.files?.[0] ?? null)}
          aria-invalid={fileError ? true : undefined}
          aria-describedby={`${id}-drop-hint${fileError ? ` ${fileErrorId}` : ""}`}
          className="mt-2 block w-full max-w-full text-sm text-slate-700 file:mr-3 file:rounded file:border file:border-slate-300 file:bg-white file:px-3 file:py-1.5 file:text-sm file:font-medium file:text-slate-800 hover:file:bg-slate-50"
        />
        <p id={`${id}-drop-hint`} className="mt-2 text-xs text-slate-600">
          Or drop the file here. The first line of a CSV names the columns; a JSON Lines file has one object per line.
          {file && !problem && (
            <>
              {" "}
              Chosen: <span className="break-all font-medium">{file.name}</span> ({formatBytes(file.size)}).
            </>
          )}
        </p>
        {fileError && (
          <p id={fileErrorId} role="alert" className="mt-2 text-sm text-red-700" data-testid="file-error">
            {fileError}
          </p>
        )}
      </div>

      <div className="mt-4 grid grid-cols-1 gap-4 min-[360px]:grid-cols-2 md:grid-cols-3">
        <FieldError error={fieldError("dataset")} id={`${id}-dataset-error`}>
          <Select
            id={`${id}-dataset`}
            label="Dataset"
            name="dataset"
            value={dataset}
            onChange={(e) => setDataset(e.target.value)}
            disabled={busy}
            aria-invalid={fieldError("dataset") ? true : undefined}
            aria-describedby={fieldError("dataset") ? `${id}-dataset-error` : undefined}
            options={[
              ["customers", "Customers"],
              ["orders", "Orders"],
              ["events", "Events"],
            ]}
          />
        </FieldError>
        <FieldError error={fieldError("format")} id={`${id}-format-error`}>
          <Select
            id={`${id}-format`}
            label="Format"
            name="format"
            value={format}
            onChange={(e) => setFormat(e.target.value)}
            disabled={busy}
            aria-invalid={fieldError("format") ? true : undefined}
            aria-describedby={fieldError("format") ? `${id}-format-error` : undefined}
            options={[
              ["csv", "CSV"],
              ["jsonl", "JSON Lines"],
            ]}
          />
        </FieldError>
        <FieldError error={fieldError("maxBadRows")} id={`${id}-maxBadRows-error`}>
          <label className="text-sm font-medium">
            Allow up to N bad rows
            <input
              id={`${id}-maxBadRows`}
              type="number"
              name="maxBadRows"
              min={0}
              max={1_000_000_000}
              step={1}
              inputMode="numeric"
              value={maxBadRows}
              onChange={(e) => setMaxBadRows(e.target.value)}
              disabled={busy}
              className={field}
              aria-invalid={fieldError("maxBadRows") ? true : undefined}
              aria-describedby={`${id}-maxBadRows-hint${fieldError("maxBadRows") ? ` ${id}-maxBadRows-error` : ""}`}
            />
          </label>
          <span id={`${id}-maxBadRows-hint`} className="mt-1 block text-xs text-slate-500">
            0, the default: any bad row fails the import and nothing is written. Up to N, bad rows are left out and
            listed in an errors file. A failed import offers to import again allowing the rows it found.
          </span>
        </FieldError>
      </div>

      <fieldset
        className="mt-4"
        aria-invalid={fieldError("mode") ? true : undefined}
        aria-describedby={fieldError("mode") ? `${id}-mode-error` : undefined}
      >
        <legend className="text-sm font-medium">Mode</legend>
        <div className="mt-1 grid gap-2 md:grid-cols-2">
          {MODES.map(([value, label, help], i) => (
            <label key={value} className="flex items-start gap-2 text-sm">
              <input
                id={i === 0 ? `${id}-mode` : undefined}
                type="radio"
                name="mode"
                value={value}
                checked={mode === value}
                onChange={() => setMode(value)}
                disabled={busy}
                className="mt-1"
              />
              <span>
                <span className="font-medium">{label}</span>: {help}
              </span>
            </label>
          ))}
        </div>
        {fieldError("mode") && (
          <p id={`${id}-mode-error`} className="mt-1 text-xs text-red-700">
            {fieldError("mode")}
          </p>
        )}
      </fieldset>

      <DatasetColumns dataset={dataset} />

      <UploadPanel state={upload.state} imported={uploadedId !== null && uploadedId === imported} />

      <div className="mt-4 flex flex-wrap items-center gap-3">
        {upload.state.phase === "uploading" || upload.state.phase === "paused" ? (
          <>
            {upload.state.phase === "uploading" ? (
              <Button onClick={upload.pause}>Pause</Button>
            ) : (
              <Button variant="primary" onClick={upload.resume}>
                Resume
              </Button>
            )}
            <Button
              variant="danger"
              onClick={async () => {
                const ok = await confirm({
                  title: "Cancel this upload?",
                  message: "What was sent so far is removed from the server; sending the file again starts over.",
                  confirmLabel: "Cancel upload",
                  variant: "danger",
                });
                if (!ok) return;
                setCancelError(null);
                await upload.cancel().catch((err: Error) => setCancelError(err.message));
                fileInput.current?.focus();
              }}
            >
              Cancel upload
            </Button>
          </>
        ) : (
          <Button type="submit" variant="primary" size="md" disabled={!ready || mutation.isPending || Boolean(problem)}>
            {mutation.isPending
              ? "Starting the import…"
              : pending
                ? "Start import"
                : upload.state.phase === "failed"
                  ? "Try again"
                  : "Upload and import"}
          </Button>
        )}
        {error && !error.fields.length && (
          <Alert tone="error" inline>
            Could not start the import: {error.message}
          </Alert>
        )}
        {error && error.fields.length > 0 && (
          <Alert tone="error" inline>
            Check the fields marked above.
          </Alert>
        )}
        {mutation.error && !error && (
          <Alert tone="error" inline>
            Could not start the import: {mutation.error.message}
          </Alert>
        )}
        {cancelError && (
          <Alert tone="error" inline>
            Could not remove the upload: {cancelError}
          </Alert>
        )}
      </div>
    </form>
  );
}

/** The chosen dataset's columns: what a file's header may name, what each holds, which a row must have. */
function DatasetColumns({ dataset }: { dataset: string }) {
  const columns = datasetColumns(dataset);
  if (columns.length === 0) return null;
  return (
    <details className="mt-4 text-sm" open data-testid="dataset-columns">
      <summary className="cursor-pointer font-medium">
        Columns of {dataset} ({columns.filter((c) => c.required).length} required)
      </summary>
      <TableBox label={`Columns of ${dataset}`} className="mt-2 shadow-none">
        <thead className={theadClass}>
          <tr>
            <th scope="col" className={th}>
              Column
            </th>
            <th scope="col" className={th}>
              Holds
            </th>
            <th scope="col" className={th}>
              Required
            </th>
          </tr>
        </thead>
        <tbody>
          {columns.map((c) => (
            <tr key={c.name} className="border-t border-slate-100" data-testid="dataset-column">
              <td className={`${td} font-mono text-xs`}>{c.name}</td>
              <td className={td}>{c.type}</td>
              <td className={td}>{c.required ? "required" : "optional"}</td>
            </tr>
          ))}
        </tbody>
      </TableBox>
    </details>
  );
}
