"""Episodes and datasets: VLN-CE export, validation, the oracle-linear transform."""
