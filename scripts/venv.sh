# Sourced by run.sh and test.sh: create .venv if needed, install the given requirements file
# when it changed since the last install, and activate the venv.
_req=${1:-requirements.txt}
if [ ! -x .venv/bin/python ]; then
  "${PYTHON:-python3}" -m venv .venv
fi
_stamp=".venv/.installed-$(basename "$_req")"
_hash=$(cat requirements*.txt | sha256sum | cut -c1-16)
if [ "$(cat "$_stamp" 2>/dev/null)" != "$_hash" ]; then
  echo "installing $_req into .venv ..."
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$_req"
  echo "$_hash" > "$_stamp"
fi
# shellcheck disable=SC1091
source .venv/bin/activate
