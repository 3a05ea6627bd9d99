"use client";

import { useEffect, useRef, type ReactNode } from "react";

/**
 * The product's tables. From `sm` up a table sits in a card that scrolls sideways inside its own
 * box. Below `sm` (phones) every row becomes a card of its own: each cell on a line of its own,
 * named by its column's header (copied to `data-label` here, so a table cannot forget it), and
 * nothing is cut off or hidden in a sideways scroll (`.table-cards` in app/globals.css).
 * `th`/`td` are the shared cell styles; headers are spaced and never run together.
 */
export const th = "whitespace-nowrap px-3 py-2 text-left font-medium";
export const td = "px-3 py-2 align-top";

/** Copies each column's header text onto its body cells as `data-label` (colspans counted). */
function labelCells(table: HTMLTableElement): void {
  const head = table.tHead?.rows[0];
  if (!head) return;
  const names: string[] = [];
  for (const cell of Array.from(head.cells)) {
    const name = (cell.getAttribute("aria-label") ?? cell.textContent ?? "").trim();
    for (let i = 0; i < cell.colSpan; i++) names.push(name);
  }
  for (const body of Array.from(table.tBodies)) {
    for (const row of Array.from(body.rows)) {
      let col = 0;
      for (const cell of Array.from(row.cells)) {
        const name = names[col] ?? "";
        if (cell.colSpan > 1 || !name) cell.setAttribute("data-label", "");
        else if (cell.dataset.label === undefined || cell.dataset.auto === "1") {
          cell.dataset.label = name;
          cell.dataset.auto = "1";
        }
        col += cell.colSpan;
      }
    }
  }
}

export function TableBox({
  children,
  label,
  testId,
  className = "",
  cards = true,
}: {
  children: ReactNode;
  /** The table's accessible name (its region scrolls, so it is focusable and named). */
  label: string;
  testId?: string;
  className?: string;
  /** Rows become cards below `sm` (default). Off only for a table that fits a phone as a table. */
  cards?: boolean;
}) {
  const ref = useRef<HTMLTableElement>(null);
  useEffect(() => {
    const table = ref.current;
    if (!table || !cards) return;
    labelCells(table);
    const seen = new MutationObserver(() => labelCells(table));
    seen.observe(table, { childList: true, subtree: true, characterData: true });
    return () => seen.disconnect();
  }, [cards]);
  return (
    <div
      role="region"
      aria-label={label}
      tabIndex={0}
      data-testid={testId}
      className={`max-w-full overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm ${cards ? "table-cards" : ""} ${className}`}
    >
      <table ref={ref} className="w-full text-left text-sm">
        {children}
      </table>
    </div>
  );
}

/** The header row's style: small caps on a grey band. */
export const theadClass = "bg-slate-50 text-xs uppercase tracking-wide text-slate-500";
