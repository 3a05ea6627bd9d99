#!/usr/bin/env bash
# bench/search-index.sh — what a trigram GIN index on the jobs table costs its updates (a second
# line beside bench:throughput and bench:api, docs/BENCHMARKS.md "Search off the jobs table").
# On a copy of `jobs` (every index, no triggers) in the database $DATABASE_URL (migrated), with
# 20,000 queued rows: pgbench flips random rows' status (4 clients, 8 s), then inserts new rows,
# with the index as it was on `jobs` (fastupdate on), with fastupdate off, and without it.
# Needs psql and pgbench. Drops its table (search_index_bench) at the end.
set -euo pipefail
url="${DATABASE_URL:?set DATABASE_URL to a migrated database}"
rounds="${ROUNDS:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"; psql "$url" -qc "DROP TABLE IF EXISTS search_index_bench, search_index_bench_ids" >/dev/null' EXIT
P() { psql "$url" -q -v ON_ERROR_STOP=1 "$@" >/dev/null; }
P -c "DROP TABLE IF EXISTS search_index_bench; CREATE TABLE search_index_bench (LIKE jobs INCLUDING ALL)"
# LIKE copied the table's own trigram index when it had one: start from none.
for idx in $(psql "$url" -Atc "SELECT indexname FROM pg_indexes WHERE tablename = 'search_index_bench' AND indexdef LIKE '%gin_trgm_ops%'"); do
  P -c "DROP INDEX $idx"
done
cat > "$tmp/fill.sql" <<'SQL'
TRUNCATE search_index_bench;
INSERT INTO search_index_bench (id, tenant_id, type, queue, status, input, input_hash)
SELECT gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'export', 'interactive', 'queued',
       jsonb_build_object('dataset', 'orders', 'format', 'csv', 'compression', 'none',
                          'filter', jsonb_build_object('from', (now() - (g || ' minutes')::interval)::text)),
       md5(g::text)
FROM generate_series(1, 20000) g;
DROP TABLE IF EXISTS search_index_bench_ids;
CREATE TABLE search_index_bench_ids AS SELECT row_number() OVER () AS k, id FROM search_index_bench;
ALTER TABLE search_index_bench_ids ADD PRIMARY KEY (k);
VACUUM ANALYZE search_index_bench; VACUUM ANALYZE search_index_bench_ids;
SQL
cat > "$tmp/update.sql" <<'SQL'
\set n random(1, 20000)
UPDATE search_index_bench
   SET status = CASE WHEN status = 'queued' THEN 'running'::job_status ELSE 'queued'::job_status END, updated_at = now()
 WHERE id = (SELECT id FROM search_index_bench_ids WHERE k = :n);
SQL
cat > "$tmp/insert.sql" <<'SQL'
INSERT INTO search_index_bench (id, tenant_id, type, queue, status, input, input_hash)
VALUES (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'export', 'interactive', 'queued',
        jsonb_build_object('dataset', 'orders', 'format', 'csv', 'compression', 'none',
                           'filter', jsonb_build_object('from', now()::text)), md5(random()::text));
SQL
expr="((input::text || ' ') || coalesce(error_message, '')) gin_trgm_ops"
for round in $(seq 1 "$rounds"); do
  for variant in on off none; do
    P -c "DROP INDEX IF EXISTS search_index_bench_trgm"
    case $variant in
      on) P -c "CREATE INDEX search_index_bench_trgm ON search_index_bench USING gin ($expr)" ;;
      off) P -c "CREATE INDEX search_index_bench_trgm ON search_index_bench USING gin ($expr) WITH (fastupdate = off)" ;;
    esac
    P -f "$tmp/fill.sql"
    for script in update insert; do
      rm -f "$tmp"/log*
      out="$(pgbench "$url" -n -c 4 -T 8 -f "$tmp/$script.sql" -l --log-prefix="$tmp/log" 2>&1)"
      tps="$(grep -m1 'tps =' <<<"$out" | awk '{printf "%.0f", $3}')"
      lat="$(cat "$tmp"/log* | awk '{print $3}' | sort -n |
        awk '{a[NR]=$1} END {printf "p50 %5.2f ms  p99 %6.2f ms  max %6.1f ms", a[int(NR*0.5)]/1000, a[int(NR*0.99)]/1000, a[NR]/1000}')"
      printf 'round %s  index %-4s  %-6s  %6s/s  %s\n' "$round" "$variant" "$script" "$tps" "$lat"
    done
  done
done
