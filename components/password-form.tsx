"use client";

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { changePassword } from "@/lib/client/accounts";
import { ApiError } from "@/lib/client/api";
import { Alert } from "./ui/alert";
import { Button } from "./ui/button";
import { fieldClass } from "./ui/select";

/** Changes one's own password; every session (this one too) then signs in again. */
export function PasswordForm({ minLength }: { minLength: number }) {
  const [mismatch, setMismatch] = useState(false);
  const change = useMutation({
    mutationFn: changePassword,
    onSuccess: () => {
      // Sessions from before the change are refused from now on: sign in with the new password.
      window.location.assign("/login");
    },
  });
  const fieldError = (path: string) =>
    change.error instanceof ApiError ? change.error.fields.find((f) => f.path === path)?.message : undefined;
  const onSubmit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const next = String(f.get("newPassword") ?? "");
    if (next !== String(f.get("confirm") ?? "")) return setMismatch(true);
    setMismatch(false);
    change.mutate({ currentPassword: String(f.get("currentPassword") ?? ""), newPassword: next });
  };
  return (
    <form onSubmit={onSubmit} aria-label="Change your password" className="grid max-w-md gap-3">
      <label className="text-sm font-medium">
        Current password
        <input
          name="currentPassword"
          type="password"
          required
          autoComplete="current-password"
          className={fieldClass}
          aria-invalid={Boolean(fieldError("currentPassword"))}
          aria-describedby="current-password-error"
        />
        <span id="current-password-error" className="text-xs text-red-700">
          {fieldError("currentPassword")}
        </span>
      </label>
      <label className="text-sm font-medium">
        New password (at least {minLength} characters)
        <input
          name="newPassword"
          type="password"
          required
          minLength={minLength}
          maxLength={200}
          autoComplete="new-password"
          className={fieldClass}
          aria-invalid={Boolean(fieldError("newPassword"))}
          aria-describedby="new-password-error"
        />
        <span id="new-password-error" className="text-xs text-red-700">
          {fieldError("newPassword")}
        </span>
      </label>
      <label className="text-sm font-medium">
        The new password again
        <input
          name="confirm"
          type="password"
          required
          autoComplete="new-password"
          className={fieldClass}
          aria-invalid={mismatch}
          aria-describedby="confirm-error"
        />
        <span id="confirm-error" className="text-xs text-red-700">
          {mismatch ? "The two new passwords differ" : ""}
        </span>
      </label>
      <div>
        <Button type="submit" variant="primary" size="md" disabled={change.isPending}>
          Change password
        </Button>
      </div>
      {change.error && !(change.error instanceof ApiError && change.error.fields.length) && (
        <Alert tone="error">{change.error.message}</Alert>
      )}
    </form>
  );
}
