import type { ButtonHTMLAttributes } from "react";

const variants = {
  /** The one main action of a place. */
  primary: "bg-indigo-700 text-white hover:bg-indigo-600 border border-indigo-700",
  secondary: "border border-slate-300 bg-white text-slate-800 hover:bg-slate-50",
  /** Cancels, deletes, revokes: an action that ends something. */
  danger: "border border-red-300 bg-white text-red-800 hover:bg-red-50",
  /** Pauses: stops work until someone resumes it. */
  warning: "border border-amber-700 bg-amber-700 text-white hover:bg-amber-800",
  /** Looks like a link, acts as a button. */
  link: "text-indigo-700 underline hover:text-indigo-600",
} as const;

const sizes = { sm: "px-3 py-1 text-sm", md: "px-4 py-2 text-sm" } as const;

export type ButtonVariant = keyof typeof variants;

/** Every button of the UI: one look per variant, disabled state dimmed, `type="button"` unless told. */
export function Button({
  variant = "secondary",
  size = "sm",
  className = "",
  type = "button",
  ...props
}: ButtonHTMLAttributes<HTMLButtonElement> & { variant?: ButtonVariant; size?: keyof typeof sizes }) {
  const shape = variant === "link" ? "" : `rounded font-medium ${sizes[size]}`;
  return (
    <button
      type={type}
      className={`${shape} ${variants[variant]} disabled:cursor-not-allowed disabled:opacity-50 ${className}`}
      {...props}
    />
  );
}
