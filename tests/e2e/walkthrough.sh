#!/usr/bin/env bash
# Network completion with nothing but curl (the walk-through of docs/walkthrough.md, with a token).
# Usage: bash tests/e2e/walkthrough.sh [URL]   (default http://127.0.0.1:8000; token from OKBOOST_TOKEN)
#
# A known graph of 8 vertices with 2 features each: community A = {0,1,2,3} near (0, 1),
# community B = {4,5,6,7} near (1, 0), one bridge 3-7. We train on it, then ask for the
# edges of two new vertices, one near each community.
set -euo pipefail
URL="${1:-${OKBOOST_URL:-http://127.0.0.1:8000}}"
AUTH=()
if [ -n "${OKBOOST_TOKEN:-}" ]; then AUTH=(-H "Authorization: Bearer $OKBOOST_TOKEN"); fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }  # first "key":value of a JSON line

echo "== 1. train (answers 202 with a model id and a job id)"
curl -sS --fail-with-body "${AUTH[@]}" -H 'Content-Type: application/json' "$URL/train" -d '{
  "name": "walkthrough",
  "inputs": [[0.0, 1.0], [0.1, 0.9], [0.2, 1.0], [0.0, 0.8],
             [1.0, 0.0], [0.9, 0.1], [1.0, 0.2], [0.8, 0.0]],
  "output_kernel": {"type": "diffusion", "beta": 1.0,
                    "edges": [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3],
                              [4, 5], [4, 6], [5, 6], [5, 7], [6, 7], [3, 7]]},
  "model": "okboost",
  "params": {"n_estimators": 50, "learning_rate": 0.1, "max_splits": 2, "random_state": 0}
}' | tee "$WORK/train.json"
echo
MODEL_ID="$(field model_id < "$WORK/train.json")"
JOB_ID="$(field job_id < "$WORK/train.json")"

echo "== 2. poll the job until it is done"
for _ in $(seq 1 600); do
  curl -sS --fail-with-body "${AUTH[@]}" "$URL/jobs/$JOB_ID" > "$WORK/job.json"
  STATE="$(field state < "$WORK/job.json")"
  case "$STATE" in
    done) break ;;
    failed|cancelled) cat "$WORK/job.json"; echo; exit 1 ;;
  esac
  sleep 0.1
done
[ "$STATE" = done ] || { echo "job still $STATE"; exit 1; }
cat "$WORK/job.json"; echo

echo "== 3. edges of two new vertices: top 2 partners each, scored by the predicted kernel"
curl -sS --fail-with-body "${AUTH[@]}" -H 'Content-Type: application/json' "$URL/kernel" -d '{
  "model_id": "'"$MODEL_ID"'",
  "inputs": [[0.05, 0.95], [0.95, 0.05]],
  "against": "predicted",
  "top_k": 2
}' | tee "$WORK/edges.json"
echo

echo "== 4. the same inputs as a binary part: raw little-endian float64 plus a shape"
perl -e 'print pack("d<*", 0.05, 0.95, 0.95, 0.05)' > "$WORK/new.f64"
curl -sS --fail-with-body "${AUTH[@]}" "$URL/kernel" \
  -F "json={\"model_id\": \"$MODEL_ID\", \"top_k\": 2}" \
  -F "inputs=@$WORK/new.f64;type=application/octet-stream" \
  -F "inputs.shape=2,2" | tee "$WORK/edges_binary.json"
echo

echo "== 5. pre-images: the training vertex whose diffusion profile is closest"
curl -sS --fail-with-body "${AUTH[@]}" -H 'Content-Type: application/json' "$URL/predict" \
  -d '{"model_id": "'"$MODEL_ID"'", "inputs": [[0.05, 0.95], [0.95, 0.05]], "top_k": 1}'
echo
cmp -s "$WORK/edges.json" "$WORK/edges_binary.json" || { echo "binary and JSON answers differ"; exit 1; }

echo "== 6. evaluate: edge AUC and precision at 3 of two test vertices whose edges are known"
curl -sS --fail-with-body "${AUTH[@]}" -H 'Content-Type: application/json' "$URL/evaluate" -d '{
  "model_id": "'"$MODEL_ID"'", "inputs": [[0.05, 0.95], [0.95, 0.05]],
  "edges": {"new_new": [], "new_known": [[0, 0], [0, 1], [0, 2], [1, 4], [1, 5], [1, 6]]},
  "k": 3
}'
echo
echo "MODEL_ID=$MODEL_ID"
