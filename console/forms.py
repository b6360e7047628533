"""The console's forms: filters (GET), search (GET), isolation (POST) and login."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from threadmem.domain.selectors import is_operator
from threadmem.lib.projects import PROJECT_MAX_CHARS
from threadmem.models import ToolCall

YES_NO = [("", "any"), ("yes", "yes"), ("no", "no")]


class StaffAuthenticationForm(AuthenticationForm):
    """Django's login form, refusing accounts that are not staff.

    A non-staff user (an agent's owner) has nothing to do in the console, so
    it gets a clear error at the door instead of a session and a 403 page.
    """

    error_messages = {
        **AuthenticationForm.error_messages,
        "not_staff": "This console is for operators (staff accounts). Agents' owners use the API.",
    }

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        if not is_operator(user):
            raise forms.ValidationError(self.error_messages["not_staff"], code="not_staff")


def _utc_time(*, label: str) -> forms.DateTimeField:
    """An optional time from the browser's datetime-local box (or typed by hand, seconds and time optional)."""
    return forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
        label=label,
    )


class ThreadFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=255, label="Channel or title")
    owner = forms.CharField(required=False, max_length=150)
    project = forms.CharField(required=False, max_length=PROJECT_MAX_CHARS)
    isolated = forms.ChoiceField(required=False, choices=YES_NO)
    failed = forms.BooleanField(required=False, label="Failed compaction")

    def filters(self) -> dict[str, Any]:
        if not self.is_valid():
            return {}
        data = self.cleaned_data
        isolated = {"yes": True, "no": False}.get(data["isolated"])
        return {
            "text": data["q"].strip(),
            "owner": data["owner"].strip(),
            "project": data["project"].strip(),
            "isolated": isolated,
            "failed_compaction": data["failed"],
        }


class ToolCallFilterForm(forms.Form):
    thread = forms.CharField(required=False, max_length=255, label="Channel")
    caller = forms.CharField(required=False, max_length=150)
    tool = forms.ChoiceField(required=False, choices=[("", "any"), *ToolCall.Tool.choices])
    surface = forms.ChoiceField(required=False, choices=[("", "any"), *ToolCall.Surface.choices])
    since = _utc_time(label="From (UTC)")
    until = _utc_time(label="To (UTC)")
    truncated = forms.BooleanField(required=False, label="Truncated only")

    def filters(self) -> dict[str, Any]:
        if not self.is_valid():
            return {}
        data = self.cleaned_data
        return {
            "thread": data["thread"].strip(),
            "caller": data["caller"].strip(),
            "tool": data["tool"],
            "surface": data["surface"],
            "since": data["since"],
            "until": data["until"],
            "truncated_only": data["truncated"],
        }


class SearchForm(forms.Form):
    q = forms.CharField(required=True, max_length=2000, label="Query")
    channel = forms.CharField(required=False, max_length=255, label="Channel (empty: global)")
    project = forms.CharField(required=False, max_length=PROJECT_MAX_CHARS, label="Project (empty: every project)")


class IsolationForm(forms.Form):
    """``isolated`` is the state asked for; without ``confirm`` the view asks first."""

    isolated = forms.TypedChoiceField(choices=[("true", "isolate"), ("false", "release")], coerce=lambda v: v == "true")
    confirm = forms.BooleanField(required=False)
