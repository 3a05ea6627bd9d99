"use client";

import { useState } from "react";
import { Button } from "./button";

/** Copies `text` to the clipboard and says so (or that it could not). */
export function CopyButton({ text, label = "Copy", className }: { text: string; label?: string; className?: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  return (
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
  );
}
