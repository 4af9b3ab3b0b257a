"""Data analysis for workspace tool packs: data frames kept by name (`frames`) and the chart
tools (`charts`). Never used by the core."""
