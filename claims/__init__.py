"""Published claims (a field report's, a recipe's, another tool's figures) checked on this machine."""
