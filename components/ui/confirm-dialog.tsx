"use client";

import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";
import { Button, type ButtonVariant } from "./button";

export type ConfirmOptions = {
  title: string;
  /** What will happen, in the reader's words. */
  message: ReactNode;
  confirmLabel: string;
  variant?: ButtonVariant;
  /** Ask for a reason (a pause's, a cancel's): shown on the record. */
  reason?: { label: string; required?: boolean; placeholder?: string };
};

type Pending = ConfirmOptions & { resolve: (answer: { reason?: string } | null) => void };

/**
 * A modal confirmation (a native <dialog>: focus kept inside, Escape cancels)
 * for actions that cannot be undone. `confirm(options)` resolves to the answer
 * (with the reason, when asked for) or null when the reader backs out.
 * Render `dialog` once in the component that asks.
 */
export function useConfirm(): {
  confirm: (options: ConfirmOptions) => Promise<{ reason?: string } | null>;
  dialog: ReactNode;
} {
  const [pending, setPending] = useState<Pending | null>(null);
  const confirm = useCallback(
    (options: ConfirmOptions) =>
      new Promise<{ reason?: string } | null>((resolve) => setPending({ ...options, resolve })),
    [],
  );
  const close = (answer: { reason?: string } | null) => {
    pending?.resolve(answer);
    setPending(null);
  };
  return { confirm, dialog: pending ? <ConfirmDialog key={pending.title} pending={pending} onClose={close} /> : null };
}

function ConfirmDialog({
  pending,
  onClose,
}: {
  pending: Pending;
  onClose: (answer: { reason?: string } | null) => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState("");
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  const missing = pending.reason?.required === true && !reason.trim();
  return (
    <dialog
      ref={ref}
      aria-labelledby="confirm-title"
      aria-describedby="confirm-message"
      onCancel={(e) => {
        e.preventDefault();
        onClose(null);
      }}
      className="m-auto w-[min(28rem,calc(100vw-2rem))] rounded-lg border border-slate-200 p-0 shadow-xl backdrop:bg-slate-900/40"
    >
      <form
        method="dialog"
        className="space-y-4 p-5"
        onSubmit={(e) => {
          e.preventDefault();
          if (missing) return;
          onClose(pending.reason ? { reason: reason.trim() || undefined } : {});
        }}
      >
        <h2 id="confirm-title" className="text-lg font-semibold">
          {pending.title}
        </h2>
        <div id="confirm-message" className="text-sm text-slate-700">
          {pending.message}
        </div>
        {pending.reason && (
          <label className="block text-sm font-medium">
            {pending.reason.label}
            {pending.reason.required ? "" : " (optional)"}
            <textarea
              name="reason"
              value={reason}
              onChange={(e) => setReason(e.target.value)}
              maxLength={500}
              rows={2}
              required={pending.reason.required}
              placeholder={pending.reason.placeholder}
              className="mt-1 block w-full rounded border border-slate-300 px-2 py-1.5"
            />
          </label>
        )}
        <div className="flex justify-end gap-3">
          <Button onClick={() => onClose(null)}>Go back</Button>
          <Button type="submit" variant={pending.variant ?? "primary"} disabled={missing} autoFocus>
            {pending.confirmLabel}
          </Button>
        </div>
      </form>
    </dialog>
  );
}
