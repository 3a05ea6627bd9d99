import type { Metadata } from "next";
import { notFound, redirect } from "next/navigation";
import { cache } from "react";
import { JobDetail } from "@/components/job-detail";
import { isOperator } from "@/lib/auth/authorize";
import { jobTitle } from "@/lib/client/kinds/lookup";
import { AppError } from "@/lib/errors";
import { getJob, getJobRelations } from "@/lib/jobs/queries";
import { sessionPrincipal } from "@/lib/http/principal";

/** The job, or null when the principal may not see it (read once per request, for the title and the page). */
const loadJob = cache(async (jobId: string) => {
  const principal = await sessionPrincipal();
  if (!principal) return null;
  try {
    return await getJob(principal, jobId);
  } catch (err) {
    if (err instanceof AppError && err.code === "not_found") return null;
    throw err;
  }
});

export async function generateMetadata({ params }: { params: Promise<{ jobId: string }> }): Promise<Metadata> {
  const job = await loadJob((await params).jobId);
  return { title: job ? jobTitle(job) : "Job" };
}

export default async function JobPage({ params }: { params: Promise<{ jobId: string }> }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  const { jobId } = await params;
  const job = await loadJob(jobId);
  if (!job) notFound();
  const relations = await getJobRelations(principal, jobId);
  return <JobDetail initial={job} canOperate={isOperator(principal)} relations={relations} />;
}
