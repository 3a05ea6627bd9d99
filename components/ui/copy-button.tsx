"use client";

import { useState } from "react";
import { Button } from "./button";

/** Copies `text` to the clipboard and says so (or that it could not), on the button and to screen readers. */
export function CopyButton({ text, label = "Copy", className }: { text: string; label?: string; className?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  return (
    <>
      <Button
        className={className}
        onClick={() =>
          void navigator.clipboard
            .writeText(text)
            .then(() => setState("copied"))
            .catch(() => setState("failed"))
        }
      >
        {state === "copied" ? "Copied" : state === "failed" ? "Copy failed: select and copy it" : label}
      </Button>
      {/* A label change on a focused button is not always read out: this is. */}
      <span role="status" className="sr-only">
        {state === "copied"
          ? "Copied to the clipboard"
          : state === "failed"
            ? "Could not copy: select and copy it"
            : ""}
      </span>
    </>
  );
}
