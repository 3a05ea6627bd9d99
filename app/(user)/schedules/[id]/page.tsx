import type { Metadata } from "next";
import { notFound, redirect } from "next/navigation";
import { ScheduleDetail } from "@/components/schedule-detail";
import { AppError } from "@/lib/errors";
import { sessionPrincipal } from "@/lib/http/principal";
import { getSchedule } from "@/lib/schedules/service";

export const metadata: Metadata = { title: "Schedule" };

export default async function SchedulePage({ params }: { params: Promise<{ id: string }> }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  const { id } = await params;
  try {
    // Another tenant's schedule is not found: the page says so before any of it loads.
    await getSchedule(principal, id);
  } catch (err) {
    if (err instanceof AppError && err.code === "not_found") notFound();
    throw err;
  }
  return <ScheduleDetail id={id} />;
}
