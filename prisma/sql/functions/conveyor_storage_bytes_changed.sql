CREATE OR REPLACE FUNCTION public.conveyor_storage_bytes_changed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_tenant uuid;
  v_delta bigint := 0;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN
    v_delta := v_delta - OLD.size;
    v_tenant := OLD.tenant_id;
  END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.deleted_at IS NULL THEN
    v_delta := v_delta + NEW.size;
    v_tenant := NEW.tenant_id;
  END IF;
  IF v_delta <> 0 THEN
    IF TG_TABLE_NAME = 'export_files' THEN
      INSERT INTO tenant_storage AS s (tenant_id, export_bytes) VALUES (v_tenant, v_delta)
      ON CONFLICT (tenant_id) DO UPDATE SET export_bytes = s.export_bytes + EXCLUDED.export_bytes;
    ELSE
      INSERT INTO tenant_storage AS s (tenant_id, upload_bytes) VALUES (v_tenant, v_delta)
      ON CONFLICT (tenant_id) DO UPDATE SET upload_bytes = s.upload_bytes + EXCLUDED.upload_bytes;
    END IF;
  END IF;
  RETURN NULL;
END $function$;
