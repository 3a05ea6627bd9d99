DROP TRIGGER IF EXISTS jobs_progress_sample ON public.jobs;
CREATE TRIGGER jobs_progress_sample BEFORE UPDATE OF status, progress_done ON public.jobs FOR EACH ROW WHEN (((new.progress_done IS DISTINCT FROM old.progress_done) OR ((old.progress_samples IS NOT NULL) AND (new.status IS DISTINCT FROM old.status)))) EXECUTE FUNCTION conveyor_job_progress_sample();
