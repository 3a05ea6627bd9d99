import type { Metadata } from "next";
import { notFound, redirect } from "next/navigation";
import { JobDetail } from "@/components/job-detail";
import { isOperator } from "@/lib/auth/authorize";
import { AppError } from "@/lib/errors";
import { getJob } from "@/lib/jobs/queries";
import { sessionPrincipal } from "@/lib/http/principal";

export const metadata: Metadata = { title: "Job" };

export default async function JobPage({ params }: { params: Promise<{ jobId: string }> }) {
  const principal = await sessionPrincipal();
  if (!principal) redirect("/login");
  const { jobId } = await params;
  try {
    const job = await getJob(principal, jobId);
    return <JobDetail initial={job} canOperate={isOperator(principal)} />;
  } catch (err) {
    if (err instanceof AppError && err.code === "not_found") notFound();
    throw err;
  }
}
