"""Build hook: installs ``condvln-gymnasium.pth`` beside the package (everything else is in
pyproject.toml).

Gymnasium ≥ 1.0 dropped its ``gymnasium.envs`` entry-point plugins, so nothing registers a
third-party environment before ``gymnasium.make`` unless the package was imported. The one-line
``.pth`` file (run by ``site`` at interpreter start) imports ``condvln``, whose ``__init__`` only
arms an import hook that registers ``condvln/CondVLN-v0`` when ``gymnasium`` is imported; it
imports neither gymnasium nor numpy itself.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "condvln-gymnasium.pth"
LINE = "import condvln\n"


class BuildPyWithPth(build_py):
    """``build_py`` that also writes :data:`PTH` at the top of the wheel (site-packages)."""

    def run(self) -> None:
        super().run()
        # an editable wheel (PEP 660) is assembled from the install folder, a wheel from build_lib
        top = self.get_finalized_command("install").install_lib if self.editable_mode else None
        target = Path(top or self.build_lib, PTH)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(LINE, encoding="utf-8")


setup(cmdclass={"build_py": BuildPyWithPth})
