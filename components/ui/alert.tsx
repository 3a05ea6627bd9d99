import type { ReactNode } from "react";

const tones = {
  /** Something failed: announced at once to screen readers. */
  error: "border-red-200 bg-red-50 text-red-800",
  warning: "border-amber-200 bg-amber-50 text-amber-900",
  success: "border-emerald-200 bg-emerald-50 text-emerald-800",
  /** What happened, neither good nor bad (a cancel, an action that changed nothing). */
  neutral: "border-slate-200 bg-slate-50 text-slate-700",
  info: "border-indigo-200 bg-indigo-50 text-indigo-900",
} as const;

export type AlertTone = keyof typeof tones;

/**
 * A message about what just happened or what is wrong. `error` is an alert
 * (role=alert); the others are polite status messages (role=status). `inline`
 * renders it as text within a line of controls instead of a box.
 */
export function Alert({
  tone,
  title,
  children,
  inline = false,
  testId,
  className = "",
}: {
  tone: AlertTone;
  title?: string;
  children?: ReactNode;
  inline?: boolean;
  testId?: string;
  className?: string;
}) {
  const role = tone === "error" ? "alert" : "status";
  if (inline) {
    const text = {
      error: "text-red-700",
      warning: "text-amber-800",
      success: "text-emerald-700",
      neutral: "text-slate-700",
      info: "text-indigo-800",
    }[tone];
    return (
      <span role={role} data-testid={testId} className={`text-sm ${text} ${className}`}>
        {children}
      </span>
    );
  }
  return (
    <div
      role={role}
      aria-label={title}
      data-testid={testId}
      className={`rounded-lg border p-4 text-sm ${tones[tone]} ${className}`}
    >
      {title && <h2 className="font-semibold">{title}</h2>}
      {children && <div className={title ? "mt-1" : ""}>{children}</div>}
    </div>
  );
}
