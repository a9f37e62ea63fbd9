"""Habitat export: composed GLBs, habitat-sim semantics, scene ids, navmeshes, VLN-CE configs."""
