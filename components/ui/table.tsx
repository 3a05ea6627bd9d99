import type { ReactNode } from "react";

/**
 * The console's tables: a card that scrolls sideways inside its own box, so a
 * wide table never makes the page scroll at phone width. `th`/`td` are the
 * shared cell styles; headers are spaced and never run together.
 */
export const th = "whitespace-nowrap px-3 py-2 text-left font-medium";
export const td = "px-3 py-2 align-top";

export function TableBox({
  children,
  label,
  testId,
  className = "",
}: {
  children: ReactNode;
  /** The table's accessible name (its region scrolls, so it is focusable and named). */
  label: string;
  testId?: string;
  className?: string;
}) {
  return (
    <div
      role="region"
      aria-label={label}
      tabIndex={0}
      data-testid={testId}
      className={`max-w-full overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm ${className}`}
    >
      <table className="w-full text-left text-sm">{children}</table>
    </div>
  );
}

/** The header row's style: small caps on a grey band. */
export const theadClass = "bg-slate-50 text-xs uppercase tracking-wide text-slate-500";
