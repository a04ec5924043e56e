# Sourced by run.sh, test.sh and quackie_models.sh: create .venv if needed, install the given
# requirements file when it changed since the last install, and activate the venv.
# VENV_PROGRESS=1 lets pip print a line per package (Collecting, Downloading, Installing)
# instead of installing quietly.
_req=${1:-requirements.txt}
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
_stamp=".venv/.installed-$(basename "$_req")"
_hash=$(cat requirements*.txt | sha256sum | cut -c1-16)
if [ "$(cat "$_stamp" 2>/dev/null)" != "$_hash" ]; then
  echo "installing $_req into .venv ..."
  if [ -n "${VENV_PROGRESS:-}" ]; then
    .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -r "$_req"
  else
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$_req"
  fi
  echo "$_hash" > "$_stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
