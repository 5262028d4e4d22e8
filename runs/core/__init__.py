"""The measurement core: jobs' inner loops and statistics, plain async Python with no Django import."""
