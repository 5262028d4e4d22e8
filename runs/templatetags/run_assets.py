"""Which static files a run page loads: the one place a job kind's view script is named."""
from __future__ import annotations

from django import template
from django.templatetags.static import static

register = template.Library()


@register.simple_tag
def job_script(job: str) -> str:
    """The URL of the job's run-page view (static/js/jobs/<job>.js), which registers itself with RunCharts."""
    return static(f"js/jobs/{job}.js")
