-- Notifications (issue 35): the notifications workload is one more consumer of the engine's
-- outbox (event_consumers, conveyor_event_emit): when a member's job ends, in the transaction
-- that ends it, a notification row for its owner and — per the owner's preferences — a
-- `notification_mail` job that sends the e-mail with its own retries, so a mail that cannot be
-- sent never touches the job it is about. `jobs` gets no trigger and no column.

-- What a notification may be about, as data: a job type (or `schedule`: any scheduled run) that
-- tells its owner when it ends, or `dead_letters` (the operators' digest). A workload that wants
-- its jobs' owners told adds its row in its own migration.
CREATE TABLE "notification_kinds" (
    "kind" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "audience" TEXT NOT NULL,
    "email_default" BOOLEAN NOT NULL,
    CONSTRAINT "notification_kinds_pkey" PRIMARY KEY ("kind"),
    CONSTRAINT "notification_kinds_audience_check" CHECK ("audience" IN ('members', 'operators'))
);

INSERT INTO "notification_kinds" ("kind", "label", "audience", "email_default") VALUES
  ('export', 'export', 'members', true),
  ('import', 'import', 'members', true),
  ('schedule', 'scheduled run', 'members', true),
  ('dead_letters', 'dead-letter digest', 'operators', false);

-- A member's choice for one kind in one tenant; no row: the kind's default.
CREATE TABLE "notification_preferences" (
    "user_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "email" BOOLEAN NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "notification_preferences_pkey" PRIMARY KEY ("user_id", "tenant_id", "kind"),
    CONSTRAINT "notification_preferences_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE,
    CONSTRAINT "notification_preferences_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE,
    CONSTRAINT "notification_preferences_kind_fkey" FOREIGN KEY ("kind") REFERENCES "notification_kinds"("kind") ON DELETE CASCADE
);

CREATE INDEX "notification_preferences_tenant_kind_idx" ON "notification_preferences" ("tenant_id", "kind") WHERE "email";

-- The key that signs a member's unsubscribe links (HMAC-SHA-256), made with the first mail: a
-- link turns a preference off without a sign-in, and a new key would void every link sent.
CREATE TABLE "notification_keys" (
    "user_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "notification_keys_pkey" PRIMARY KEY ("user_id", "tenant_id"),
    CONSTRAINT "notification_keys_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE,
    CONSTRAINT "notification_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);

-- One per (job, owner): the bell's list. Keyed by the job it is about (ON DELETE CASCADE): it is
-- pruned with the job, after the tenant's job retention. `mail_job_id`: the job sending its
-- e-mail, when one was wanted; `mailed_at` once the mail server took it.
CREATE TABLE "notifications" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "job_type" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "error_message" TEXT,
    "mail_job_id" UUID,
    "mailed_at" TIMESTAMPTZ(3),
    "read_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "notifications_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "notifications_outcome_check" CHECK ("outcome" IN ('succeeded', 'failed', 'cancelled')),
    CONSTRAINT "notifications_job_user_key" UNIQUE ("job_id", "user_id"),
    CONSTRAINT "notifications_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "jobs"("id") ON UPDATE CASCADE ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    CONSTRAINT "notifications_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE,
    CONSTRAINT "notifications_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);

CREATE INDEX "notifications_user_idx" ON "notifications" ("user_id", "tenant_id", "created_at" DESC, "id" DESC);
CREATE INDEX "notifications_unread_idx" ON "notifications" ("user_id", "tenant_id") WHERE "read_at" IS NULL;

-- The operators' dead-letter digest: one row per (tenant, operator, window) that had new dead
-- letters, mailed by its own `notification_mail` job; never one mail per job. Pruned after the
-- tenant's job retention (the workload's history).
CREATE TABLE "notification_digests" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "window_from" TIMESTAMPTZ(3) NOT NULL,
    "window_to" TIMESTAMPTZ(3) NOT NULL,
    "total" INTEGER NOT NULL,
    "job_ids" UUID[] NOT NULL,
    "mail_job_id" UUID,
    "mailed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "notification_digests_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "notification_digests_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE,
    CONSTRAINT "notification_digests_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);

CREATE INDEX "notification_digests_tenant_idx" ON "notification_digests" ("tenant_id", "created_at");

-- Where each tenant's digest got to: dead letters that ended after `covered_to` are new.
CREATE TABLE "notification_digest_marks" (
    "tenant_id" UUID NOT NULL,
    "covered_to" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "notification_digest_marks_pkey" PRIMARY KEY ("tenant_id"),
    CONSTRAINT "notification_digest_marks_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);

-- A `notification_mail` job for one notification or digest (input `{ notificationId }` or
-- `{ digestId }`), on the engine's `bulk` queue; no owner (it is nobody's job in their lists).
CREATE FUNCTION "conveyor_notify_mail"(p_tenant uuid, p_input jsonb) RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
  v_job uuid := conveyor_uuid_v7();
BEGIN
  INSERT INTO jobs (id, tenant_id, type, queue, priority, status, input, input_hash, max_attempts, run_at, updated_at)
  VALUES (v_job, p_tenant, 'notification_mail', 'bulk', 0, 'queued', p_input,
          encode(sha256(convert_to('notification_mail:' || p_input::text, 'UTF8')), 'hex'), 7, now(), now());
  RETURN v_job;
END $$;

-- The consumer: whether the event is a job's end (the engine's job.* events) at all.
CREATE FUNCTION "conveyor_notify_wanted"(p_tenant uuid, p_event text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT p_event IN ('job.succeeded', 'job.failed', 'job.cancelled')
$$;

-- A top-level job of an owner who is still a member ended: notify them if its kind tells (a
-- scheduled run is kind `schedule`, else its type); none when they cancelled it themselves.
-- The e-mail is a job of its own when their preference (or the kind's default) wants one.
CREATE FUNCTION "conveyor_notify_consume"(p_tenant uuid, p_event text, p_data jsonb, p_job uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_owner uuid;
  v_canceller uuid;
  v_kind text;
  v_email boolean;
  v_id uuid;
  v_outcome text := p_data ->> 'status';
BEGIN
  IF NOT conveyor_notify_wanted(p_tenant, p_event) OR p_job IS NULL THEN
    RETURN;
  END IF;
  SELECT created_by_id, cancel_requested_by_id INTO v_owner, v_canceller FROM jobs WHERE id = p_job;
  IF v_owner IS NULL OR (v_outcome = 'cancelled' AND v_canceller = v_owner)
     OR NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = v_owner AND tenant_id = p_tenant) THEN
    RETURN;
  END IF;
  SELECT k.kind, coalesce(p.email, k.email_default) INTO v_kind, v_email
    FROM notification_kinds k
    LEFT JOIN notification_preferences p ON p.user_id = v_owner AND p.tenant_id = p_tenant AND p.kind = k.kind
   WHERE k.audience = 'members'
     AND k.kind = CASE WHEN EXISTS (SELECT 1 FROM schedule_runs WHERE job_id = p_job) THEN 'schedule'
                       ELSE p_data ->> 'type' END;
  IF v_kind IS NULL THEN
    RETURN;
  END IF;
  v_id := conveyor_uuid_v7();
  INSERT INTO notifications (id, tenant_id, user_id, job_id, kind, job_type, outcome, error_message)
  VALUES (v_id, p_tenant, v_owner, p_job, v_kind, p_data ->> 'type', v_outcome, p_data -> 'error' ->> 'message')
  ON CONFLICT (job_id, user_id) DO NOTHING;
  IF FOUND AND v_email THEN
    UPDATE notifications SET mail_job_id = conveyor_notify_mail(p_tenant, jsonb_build_object('notificationId', v_id))
     WHERE id = v_id;
  END IF;
END $$;

INSERT INTO "event_consumers" ("name", "wanted_function", "consume_function")
VALUES ('notifications', 'conveyor_notify_wanted', 'conveyor_notify_consume');
