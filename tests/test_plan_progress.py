"""The plan's transfer bar fits 80 columns and never cuts its figures."""

from rich.cells import cell_len

from npudoctor.plan.transfer import progress_bar


def test_transfer_bar_fits_80_columns_and_keeps_its_figures(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    bar = progress_bar(True)
    bar.add_task("copy Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run", total=2_147_483_648, completed=1_073_741_824)
    bar.add_task("wheels", total=3_456_789_012, completed=123_456_789)
    bar.console.print(bar.get_renderable())
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines  # one line a task: nothing wrapped
    assert all(cell_len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("copy Ascend-cann-toolki…") and "1.1/2.1 GB" in lines[0]
    assert lines[1].startswith("wheels ") and "0.1/3.5 GB" in lines[1]
    assert not progress_bar(False)
