"""Django apps. Each owns one set of models; others reach them through its services/selectors."""
