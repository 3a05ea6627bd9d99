/**
 * Following the process that started this one. `npm start` runs its supervisor,
 * web server and workers each in a process group of its own (so that a Ctrl-C
 * reaches the supervisor alone, which stops them once, in order) — and so a
 * SIGKILL of its group, an OOM kill or a crash of the parent reaches none of
 * them. The parent therefore starts each with an IPC channel, and the child
 * stops when the channel closes: the kernel closes the parent's end however the
 * parent ends.
 */

/**
 * Calls `onGone` once when the parent that started this process with an IPC
 * channel (`stdio: [..., "ipc"]`) is gone. Returns false, and does nothing,
 * in a process started without one (by hand, by systemd, in a container).
 */
export function followParent(onGone: () => void): boolean {
  if (!process.channel) return false;
  process.once("disconnect", onGone);
  return true;
}
