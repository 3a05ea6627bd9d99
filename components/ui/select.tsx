import type { SelectHTMLAttributes } from "react";
import { useQueueNames } from "@/lib/client/queues";

export const fieldClass = "mt-1 block w-full rounded border border-slate-300 px-2 py-1.5";

/** A labelled select. `options`: values (shown as they are) or [value, label] pairs; `any`: a first, empty choice. */
export function Select({
  label,
  options,
  any,
  className = "",
  ...props
}: SelectHTMLAttributes<HTMLSelectElement> & {
  label: string;
  options: readonly (string | readonly [string, string])[];
  any?: string;
}) {
  return (
    <label className={`text-sm font-medium ${className}`}>
      {label}
      <select className={fieldClass} {...props}>
        {any !== undefined && <option value="">{any}</option>}
        {options.map((o) => {
          const [value, text] = typeof o === "string" ? [o, o] : o;
          return (
            <option key={value} value={value}>
              {text}
            </option>
          );
        })}
      </select>
    </label>
  );
}

/** The queues, from the engine's registry (handed down by the signed-in layout). */
export function QueueSelect(props: Omit<Parameters<typeof Select>[0], "options">) {
  return <Select {...props} options={useQueueNames()} />;
}
