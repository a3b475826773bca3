// Staff members, admin groups and the admin's own profile (with its API token).
import { html } from 'htm/preact';
import { TwoFactorSection } from '../lib/security.ts';
import { useEffect, useState } from 'preact/hooks';
import { allPages, call, type Result } from '../lib/api.ts';
import { ApiTokenSection, PasswordForm } from '../lib/account.ts';
import { formatDate, humanize } from '../lib/format.ts';
import { Link, navigate } from '../lib/router.ts';
import { useStore } from '../lib/store.ts';
import { Badge, Button, Checkbox, Confirm, DefinitionList, ErrorMessage, Field, FormError, Loading, Notice, Pager, useAction, useLoad } from '../lib/ui.ts';
import type { AdminGroup, StaffRecord } from '../lib/types.ts';
import { DataTable, filled, refreshStaff, staff } from './common.ts';
import { StaffEmailForm } from './own-email.ts';

function loadGroups(): Promise<AdminGroup[]> {
  return allPages('admin/staff/group_get_list', {}).then((result) => result.list);
}

function groupOptions(groups: AdminGroup[] | undefined): (readonly [string, string])[] {
  return (groups ?? []).map((group) => [String(group.id), group.name] as const);
}

function NewStaffForm({ groups }: { groups: AdminGroup[] | undefined }) {
  const [form, setForm] = useState({ email: '', name: '', password: '', admin_group_id: '' });
  const action = useAction();
  const set = (name: keyof typeof form) => (value: string) => setForm({ ...form, [name]: value });
  const submit = (event: Event): void => {
    event.preventDefault();
    void action.run(async () => {
      const id = await call('admin/staff/create', { ...form, admin_group_id: Number(form.admin_group_id || groups?.[0]?.id || 1) });
      navigate(`/admin/staff/${id}`);
    });
  };
  return html`<form class="card" onSubmit=${submit} aria-labelledby="new-staff">
    <h2 id="new-staff">New staff member</h2>
    <div class="row">
      <${Field} label="E-mail" name="email" type="email" required value=${form.email} onInput=${set('email')} error=${action.error} />
      <${Field} label="Name" name="name" required value=${form.name} onInput=${set('name')} error=${action.error} />
      <${Field} label="Password" name="password" type="password" autocomplete="new-password" required value=${form.password} onInput=${set('password')} error=${action.error} />
      <${Field} label="Group" name="admin_group_id" value=${form.admin_group_id || String(groups?.[0]?.id ?? '')} onInput=${set('admin_group_id')} options=${groupOptions(groups)} error=${action.error} />
    </div>
    <${FormError} error=${action.error} fields=${['email', 'name', 'password', 'admin_group_id']} />
    <${Button} type="submit" variant="primary" busy=${action.busy}>Create staff member<//>
  </form>`;
}

export function StaffPage() {
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [page, setPage] = useState(1);
  const members = useLoad(() => call('admin/staff/get_list', { ...filled({ search: applied }), page, per_page: 25 }), [applied, page]);
  const groups = useLoad(loadGroups, []);
  const groupName = (id: number): string => groups.data?.find((group) => group.id === id)?.name ?? `#${id}`;
  return html`<h1>Staff</h1>
    <p><${Link} href="/admin/groups">Admin groups and permissions<//></p>
    <form
      class="card row"
      role="search"
      aria-label="Search staff"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        setPage(1);
        setApplied(search);
      }}
    >
      <${Field} label="Search" name="search" type="search" value=${search} onInput=${setSearch} error=${members.error} />
      <${Button} type="submit" busy=${members.loading}>Search<//>
    </form>
    <${FormError} error=${members.error} fields=${['search']} />
    ${members.data
      ? html`<${DataTable}
          caption="Staff members"
          busy=${members.loading}
          rows=${members.data.list}
          columns=${[
            ['Name', (member: StaffRecord) => html`<${Link} href=${`/admin/staff/${member.id}`}>${member.name}<//>`],
            ['E-mail', (member: StaffRecord) => member.email],
            ['Group', (member: StaffRecord) => groupName(member.admin_group_id)],
            ['Status', (member: StaffRecord) => html`<${Badge} status=${member.status} />`],
            ['Since', (member: StaffRecord) => formatDate(member.created_at), 'hide-narrow'],
          ]}
        />`
      : members.loading
        ? html`<${Loading} />`
        : null}
    <${Pager} page=${members.data} onPage=${setPage} label="Staff pages" />
    <${ErrorMessage} error=${groups.error} />
    <${NewStaffForm} groups=${groups.data} />`;
}

export function StaffMemberPage({ id }: { id: number }) {
  const member = useLoad(() => call('admin/staff/get', { id }), [id]);
  const groups = useLoad(loadGroups, []);
  // status holds what its select offers: 'active' or 'inactive'.
  const [form, setForm] = useState<{ email: string; name: string; status: StaffRecord['status']; admin_group_id: string }>({ email: '', name: '', status: 'active', admin_group_id: '' });
  const [password, setPassword] = useState({ password: '', password_confirm: '' });
  const [message, setMessage] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const save = useAction();
  const changePassword = useAction();
  const remove = useAction();
  const data = member.data;
  useEffect(() => {
    if (data) setForm({ email: data.email, name: data.name, status: data.status, admin_group_id: String(data.admin_group_id) });
  }, [data?.updated_at]);
  const set = <K extends keyof typeof form>(name: K) => (value: (typeof form)[K]) => setForm({ ...form, [name]: value });
  return html`<h1>Staff member #${id}${data ? `: ${data.name}` : ''}</h1>
    <p><${Link} href="/admin/staff">All staff<//></p>
    <${ErrorMessage} error=${member.error} />
    ${data === undefined && member.loading ? html`<${Loading} />` : null}
    ${data !== undefined
      ? html`<form
            class="card"
            aria-labelledby="staff-edit"
            onSubmit=${(event: Event) => {
              event.preventDefault();
              setMessage(null);
              void save.run(async () => {
                await call('admin/staff/update', { id, ...form, admin_group_id: Number(form.admin_group_id) });
                setMessage('Saved.');
                member.reload();
              });
            }}
          >
            <h2 id="staff-edit">Details</h2>
            <div class="row">
              <${Field} label="E-mail" name="email" type="email" required value=${form.email} onInput=${set('email')} error=${save.error} />
              <${Field} label="Name" name="name" required value=${form.name} onInput=${set('name')} error=${save.error} />
              <${Field} label="Status" name="status" value=${form.status} onInput=${set('status')} options=${[['active', 'Active'], ['inactive', 'Inactive']]} error=${save.error} />
              <${Field} label="Group" name="admin_group_id" value=${form.admin_group_id} onInput=${set('admin_group_id')} options=${groupOptions(groups.data)} error=${save.error} />
            </div>
            <${FormError} error=${save.error} fields=${['email', 'name', 'status', 'admin_group_id']} />
            <${Button} type="submit" variant="primary" busy=${save.busy}>Save<//>
          </form>
          <form
            class="card"
            aria-labelledby="staff-password"
            onSubmit=${(event: Event) => {
              event.preventDefault();
              setMessage(null);
              void changePassword.run(async () => {
                await call('admin/staff/change_password', { id, ...password });
                setPassword({ password: '', password_confirm: '' });
                setMessage('Password changed.');
              });
            }}
          >
            <h2 id="staff-password">Set password</h2>
            <div class="row">
              <${Field} label="New password" name="password" type="password" autocomplete="new-password" value=${password.password} onInput=${(value: string) => setPassword({ ...password, password: value })} error=${changePassword.error} />
              <${Field} label="Repeat the password" name="password_confirm" type="password" autocomplete="new-password" value=${password.password_confirm} onInput=${(value: string) => setPassword({ ...password, password_confirm: value })} error=${changePassword.error} />
            </div>
            <${FormError} error=${changePassword.error} fields=${['password', 'password_confirm']} />
            <${Button} type="submit" busy=${changePassword.busy}>Set password<//>
          </form>
          <${Notice}>${message}<//>
          <section class="card" aria-labelledby="staff-delete">
            <h2 id="staff-delete">Delete</h2>
            ${confirming
              ? html`<${Confirm}
                  question=${`Delete ${data.email}?`}
                  confirmLabel="Delete the staff member"
                  busy=${remove.busy}
                  onCancel=${() => setConfirming(false)}
                  onConfirm=${() =>
                    void remove.run(async () => {
                      await call('admin/staff/delete', { id });
                      navigate('/admin/staff');
                    })}
                />`
              : html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete the staff member…</button>`}
            <${ErrorMessage} error=${remove.error} />
          </section>`
      : null}`;
}

type PermissionEntry = Result<'admin/staff/permission_get_list'>[number];

const MODULE_NAMES: Record<string, string> = {
  client: 'Clients',
  order: 'Orders',
  invoice: 'Invoices and payments',
  product: 'Products and coupons',
  serviceapikey: 'API keys',
  staff: 'Staff and groups',
  system: 'Settings',
  email: 'Mail',
  webhook: 'Webhooks',
  cron: 'Scheduled jobs',
  credit: 'Prepaid credit',
};

const GROUP_NAMES: Record<string, string> = {
  view: 'View',
  manage: 'Manage',
  check: 'Check keys (app servers)',
};

let catalogue: Promise<PermissionEntry[]> | null = null;
function loadCatalogue(): Promise<PermissionEntry[]> {
  catalogue ??= call('admin/staff/permission_get_list').catch((error: unknown) => {
    catalogue = null;
    throw error;
  });
  return catalogue;
}

/** Permissions as checkboxes grouped by module, from the server's list; ones it no longer knows stay visible. */
function PermissionPicker({ value, onChange, legendPrefix }: { value: readonly string[]; onChange: (next: string[]) => void; legendPrefix: string }) {
  const list = useLoad(loadCatalogue, []);
  if (list.data === undefined) return list.error ? html`<${ErrorMessage} error=${list.error} />` : html`<${Loading} label="Loading the permissions…" />`;
  const modules = new Map<string, PermissionEntry[]>();
  for (const entry of list.data) modules.set(entry.module, [...(modules.get(entry.module) ?? []), entry]);
  const known = new Set(list.data.map((entry) => entry.permission));
  const unknown = value.filter((permission) => !known.has(permission));
  const toggle = (permission: string, on: boolean): void => onChange(on ? [...value, permission] : value.filter((item) => item !== permission));
  const box = (permission: string, label: string, hint?: string) =>
    html`<div title=${hint}><${Checkbox} name="permissions" label=${label} checked=${value.includes(permission)} onChange=${(on: boolean) => toggle(permission, on)} /></div>`;
  return html`<div class="permission-groups" role="group" aria-label=${`${legendPrefix} permissions`}>
    ${[...modules.entries()].map(
      ([module, entries]) => html`<fieldset class="permissions">
        <legend>${MODULE_NAMES[module] ?? humanize(module)}</legend>
        ${entries.map((entry) => box(entry.permission, GROUP_NAMES[entry.permission.split('.')[1] ?? ''] ?? humanize(entry.permission.split('.')[1] ?? entry.permission), `Allows ${entry.actions.join(', ')}`))}
      </fieldset>`,
    )}
    ${unknown.length > 0
      ? html`<fieldset class="permissions"><legend>Other</legend>${unknown.map((permission) => box(permission, permission))}</fieldset>`
      : null}
  </div>`;
}

function GroupRow({ group, onChanged }: { group: AdminGroup; onChanged: () => void }) {
  const [name, setName] = useState(group.name);
  const [permissions, setPermissions] = useState<string[]>(group.permissions);
  // A saved group comes back from the server: take its values, but keep the row (and its "Saved." message).
  useEffect(() => {
    setName(group.name);
    setPermissions(group.permissions);
  }, [group.updated_at]);
  const [message, setMessage] = useState<string | null>(null);
  const [confirming, setConfirming] = useState(false);
  const save = useAction();
  const remove = useAction();
  const isAdministrators = group.id === 1;
  return html`<form
    class="card"
    aria-label=${`Group ${group.name}`}
    onSubmit=${(event: Event) => {
      event.preventDefault();
      setMessage(null);
      void save.run(async () => {
        await call('admin/staff/group_update', { id: group.id, name, ...(!isAdministrators && { permissions }) });
        setMessage('Saved.');
        onChanged();
      });
    }}
  >
    <h2>${group.name}</h2>
    <${Field} label="Name" name="name" required value=${name} onInput=${setName} error=${save.error} />
    ${isAdministrators
      ? html`<p>Administrators may do everything.</p>`
      : html`<${PermissionPicker} value=${permissions} onChange=${setPermissions} legendPrefix=${group.name} />`}
    <${FormError} error=${save.error} fields=${['name', 'permissions']} />
    <${Notice}>${message}<//>
    <div class="actions">
      <${Button} type="submit" variant="primary" busy=${save.busy}>Save group<//>
      ${!isAdministrators && !confirming ? html`<button type="button" class="danger" onClick=${() => setConfirming(true)}>Delete…</button>` : null}
    </div>
    ${confirming
      ? html`<${Confirm}
          question=${`Delete the group ${group.name}?`}
          confirmLabel="Delete the group"
          busy=${remove.busy}
          onCancel=${() => setConfirming(false)}
          onConfirm=${() =>
            void remove.run(async () => {
              await call('admin/staff/group_delete', { id: group.id });
              onChanged();
            })}
        />`
      : null}
    <${ErrorMessage} error=${remove.error} />
  </form>`;
}

export function GroupsPage() {
  const [page, setPage] = useState(1);
  const groups = useLoad(() => call('admin/staff/group_get_list', { page, per_page: 20 }), [page]);
  const [name, setName] = useState('');
  const [permissions, setPermissions] = useState<string[]>([]);
  const create = useAction();
  return html`<h1>Admin groups</h1>
    <p><${Link} href="/admin/staff">Staff members<//></p>
    <${ErrorMessage} error=${groups.error} />
    ${groups.data === undefined && groups.loading ? html`<${Loading} />` : null}
    ${groups.data?.list.map((group) => html`<${GroupRow} key=${group.id} group=${group} onChanged=${groups.reload} />`)}
    <${Pager} page=${groups.data} onPage=${setPage} label="Group pages" />
    <form
      class="card"
      aria-labelledby="new-group"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        void create.run(async () => {
          await call('admin/staff/group_create', { name, permissions });
          setName('');
          setPermissions([]);
          groups.reload();
        });
      }}
    >
      <h2 id="new-group">New group</h2>
      <${Field} label="Name" name="name" required value=${name} onInput=${setName} error=${create.error} />
      <${PermissionPicker} value=${permissions} onChange=${setPermissions} legendPrefix="New group" />
      <${FormError} error=${create.error} fields=${['name', 'permissions']} />
      <${Button} type="submit" variant="primary" busy=${create.busy}>Create group<//>
    </form>`;
}

export function AdminProfilePage() {
  const me = useStore(staff);
  const [form, setForm] = useState({ name: me?.name ?? '' });
  const [message, setMessage] = useState<string | null>(null);
  const save = useAction();
  return html`<h1>Your profile</h1>
    ${me ? html`<${DefinitionList} items=${[['Group', me.admin_group_id === 1 ? 'Administrators' : `Group #${me.admin_group_id}`], ['Status', html`<${Badge} status=${me.status} />`], ['Since', formatDate(me.created_at)]]} />` : null}
    <form
      class="card"
      aria-labelledby="admin-details"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        setMessage(null);
        void save.run(async () => {
          await call('admin/profile/update', form);
          await refreshStaff();
          setMessage('Saved.');
        });
      }}
    >
      <h2 id="admin-details">Details</h2>
      <div class="row">
        <${Field} label="Name" name="name" required value=${form.name} onInput=${(value: string) => setForm({ ...form, name: value })} error=${save.error} />
      </div>
      <${FormError} error=${save.error} fields=${['name']} />
      <${Notice}>${message}<//>
      <${Button} type="submit" variant="primary" busy=${save.busy}>Save<//>
    </form>
    ${me ? html`<${StaffEmailForm} current=${me.email} />` : null}
    <${PasswordForm} path="admin/profile/change_password" />
    <${TwoFactorSection} role="admin" />
    <${ApiTokenSection}
      read=${() => call('admin/profile/get').then((record) => record.api_token)}
      resetPath="admin/profile/generate_api_key"
      usage="Scripts call the admin API with HTTP Basic authentication: user name admin, password this token."
    />`;
}
