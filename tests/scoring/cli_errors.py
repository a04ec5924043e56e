"""What every ``python -m scoring`` sub-command does with bad input, asserted once."""


def assert_one_line_error(result, *fragments):
    """Exit 2, nothing on stdout, no traceback, and one ``error: ...`` line on stderr that holds
    every fragment. ``result`` is a finished subprocess run in text or bytes mode."""
    stdout, stderr = (stream.decode("utf-8") if isinstance(stream, bytes) else stream
                      for stream in (result.stdout, result.stderr))
    assert result.returncode == 2, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]
