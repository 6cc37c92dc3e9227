"""The guide's examples of typing, pickling and cancellation run as written (docs/python.md)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def blocks(section):
    doc = (ROOT / "docs" / "python.md").read_text()
    text = doc.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("section", ["Typing", "Pickling", "Cancellation"])
def test_guide_examples_run(section, data, tmp_path):
    found = blocks(section)
    assert found, f"docs/python.md has no Python example under {section}"
    for i, code in enumerate(found):
        script = tmp_path / f"example{i}.py"
        script.write_text(code)
        env = dict(os.environ, WARPDRIVE_DATA=str(data), WARPDRIVE_PROGRESS="0")
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=300)
        assert r.returncode == 0, f"{section} example {i} failed:\n{code}\n{r.stdout}{r.stderr}"
        if section == "Cancellation":
            assert "stopped after about a second" in r.stdout
