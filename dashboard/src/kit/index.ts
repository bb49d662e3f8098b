export { Page, Section } from "./page";
export { useLoad, usePoll, useDebounced, usePaged, fetchAll, Loadable, Loading, ErrorState, LoadMore, problemTitle, type LoadHandle } from "./load";
export { Field, FormProblem, useSubmit, Button, formValue, submitLabel } from "./form";
export { notify, Notices, ConfirmDialog, CopyButton, Badge, TableWrap } from "./feedback";
export { saveFile, fileDate } from "./files";
